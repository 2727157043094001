"""The HTTP front: authentication, the operator's login and status page, connection limits."""
