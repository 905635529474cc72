"""Ray's ray.job_config: a job's settings given to init() at once (JobConfig)."""


def _check_namespace(ray_namespace):
    if not isinstance(ray_namespace, str) or not ray_namespace:
        raise ValueError("ray_namespace must be a non-empty string, not %r" % (ray_namespace,))


class JobConfig:
    """Ray's JobConfig: `orb.init(job_config=JobConfig(...))`. code_search_path:
    directories the job's workers load code from (C++ libraries, and Python modules:
    they join the workers' module path); runtime_env: the job's runtime environment;
    ray_namespace: its namespace; default_actor_lifetime: "detached" or "non_detached"
    (the default) for actors that set none; metadata: a dict of strings, kept."""

    def __init__(self, jvm_options=None, code_search_path=None, runtime_env=None, _client_job=False,
                 metadata=None, ray_namespace=None, default_actor_lifetime="non_detached",
                 _py_driver_sys_path=None):
        if jvm_options:
            raise ValueError("jvm_options: orb runs no Java workers")
        if code_search_path is not None and (isinstance(code_search_path, str)
                                             or not all(isinstance(p, str) for p in code_search_path)):
            raise TypeError("code_search_path must be a list of directory paths, not %r" % (code_search_path,))
        if metadata is not None and not (isinstance(metadata, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
            raise TypeError("metadata must be a dict of str to str, not %r" % (metadata,))
        self.code_search_path = list(code_search_path or [])
        self.metadata = dict(metadata or {})
        self.ray_namespace = None
        self._py_driver_sys_path = list(_py_driver_sys_path or [])
        self.set_runtime_env(runtime_env)
        self.set_default_actor_lifetime(default_actor_lifetime)
        if ray_namespace is not None:
            self.set_ray_namespace(ray_namespace)

    def set_metadata(self, key, value):
        self.metadata[str(key)] = str(value)

    def set_runtime_env(self, runtime_env):
        if runtime_env is not None and not isinstance(runtime_env, dict):
            raise TypeError("runtime_env must be a dict, not %s" % type(runtime_env).__name__)
        self.runtime_env = runtime_env

    def set_ray_namespace(self, ray_namespace):
        _check_namespace(ray_namespace)
        self.ray_namespace = ray_namespace

    def set_default_actor_lifetime(self, default_actor_lifetime):
        if default_actor_lifetime not in ("detached", "non_detached"):
            raise ValueError("default_actor_lifetime must be \"detached\" or \"non_detached\", not %r"
                             % (default_actor_lifetime,))
        self.default_actor_lifetime = default_actor_lifetime


__all__ = ["JobConfig"]
