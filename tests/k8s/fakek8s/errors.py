"""Kubernetes `Status` errors, shaped as a real kube-apiserver sends them."""


class ApiError(Exception):
    """An error answered to the client as a `Status` object."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(rtype, name):
    details = {"kind": rtype.name}
    if rtype.group:
        details["group"] = rtype.group
    if name:
        details["name"] = name
    return details


def _qualified(rtype):
    return rtype.name + ("." + rtype.group if rtype.group else "")


def not_found(rtype, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (_qualified(rtype), name),
                    _details(rtype, name))


def namespace_not_found(name):
    return ApiError(404, "NotFound", 'namespaces "%s" not found' % name,
                    {"name": name, "kind": "namespaces"})


def already_exists(rtype, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (_qualified(rtype), name),
                    _details(rtype, name))


def conflict(rtype, name):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                    'please apply your changes to the latest version and try again'
                    % (_qualified(rtype), name), _details(rtype, name))


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def invalid(rtype, name, causes):
    """422 Invalid; causes are (field, reason_type, message) with reason_type e.g. FieldValueRequired."""
    lines = ["%s: %s" % (field, msg) for field, _, msg in causes]
    text = lines[0] if len(lines) == 1 else "[%s]" % ", ".join(lines)
    details = {"name": name, "kind": rtype.kind}   # Invalid names the Kind, not the resource
    if rtype.group:
        details["group"] = rtype.group
    details["causes"] = [{"reason": r, "message": m, "field": f} for f, r, m in causes]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (rtype.kind, name or "", text), details)


def expired(message):
    return ApiError(410, "Expired", message)


def method_not_allowed():
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def unsupported_media_type(accepted):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(accepted))


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def path_not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def internal(message):
    return ApiError(500, "InternalError", "Internal error occurred: %s" % message)


def injected(code, rtype_name, verb, namespace, name, retry_after=1):
    """The error a fault rule answers with, worded as a real server words that code."""
    if code == 429:
        return ApiError(429, "TooManyRequests",
                        "the server has received too many requests and has asked us to try again later",
                        {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})
    if code == 403:
        where = ' in the namespace "%s"' % namespace if namespace else " at the cluster scope"
        return ApiError(403, "Forbidden",
                        '%s is forbidden: User "system:serviceaccount:default:orb" cannot %s resource '
                        '"%s" in API group ""%s' % (rtype_name, verb, rtype_name, where),
                        {"kind": rtype_name})
    if code == 409:
        return ApiError(409, "Conflict",
                        'Operation cannot be fulfilled on %s "%s": the object has been modified; please '
                        'apply your changes to the latest version and try again' % (rtype_name, name or ""),
                        {"kind": rtype_name, "name": name or ""})
    if code == 503:
        return ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request")
    if code == 504:
        return ApiError(504, "Timeout", "the server was unable to return a response in the time allotted")
    return ApiError(code, "InternalError", "Internal error occurred: injected fault")
