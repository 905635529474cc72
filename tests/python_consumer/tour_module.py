"""A module of the tour's own, imported by its workers by name."""
import orb


@orb.remote
def explode(x):
    raise ValueError("exploded with %d" % x)
