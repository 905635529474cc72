"""A fake Kubernetes API server with a fake kubelet, for orb's tests.

The entry point is tests/k8s/fake_apiserver.py; tests/k8s/README.md says what it covers.
"""
