"""pip install ./python: the orb package, with orb._core built against an installed orb.

orb's C++ core (liborb, its headers, gcs_server, raylet, orb) comes from `make install`
(or `cmake --install build --prefix P`); this finds it through $ORB_PREFIX, else the
`orb` command on PATH, else /usr/local. Offline, with Debian's python3-pybind11 and
python3-setuptools: `pip install --no-build-isolation ./python`.
"""
import glob
import os
import shutil

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def orb_prefix():
    prefix = os.environ.get("ORB_PREFIX")
    if not prefix:
        cli = shutil.which("orb")
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(cli))) if cli else "/usr/local"
    if not os.path.exists(os.path.join(prefix, "include", "orb", "api.h")):
        raise SystemExit("orb's C++ core is not installed under %s: run `make install` (or set ORB_PREFIX to "
                         "the prefix given to `cmake --install`)" % prefix)
    return prefix


PREFIX = orb_prefix()
LIB_DIR = next((d for d in (os.path.join(PREFIX, "lib"), os.path.join(PREFIX, "lib64"))
                if glob.glob(os.path.join(d, "liborb.so*"))), os.path.join(PREFIX, "lib"))

core = Pybind11Extension(
    "orb._core",
    sorted(glob.glob(os.path.join("src", "*.cc"))),
    include_dirs=[os.path.join(PREFIX, "include")],
    library_dirs=[LIB_DIR],
    runtime_library_dirs=[LIB_DIR],
    libraries=["orb"],
    cxx_std=17,
)

setup(
    name="orb",
    version="0.1.0",
    description="orb: a distributed task and actor runtime (Ray's Python API on a C++ core)",
    packages=find_packages(include=["orb", "orb.*"]),
    ext_modules=[core],
    cmdclass={"build_ext": build_ext},
    python_requires=">=3.9",
    install_requires=["cloudpickle", "msgpack"],
)
