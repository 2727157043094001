"""The interop matrix's client drivers (:mod:`benchmarks.interop`): one flow, driven through
each client library's own API, in that library's venv (standard library imports only here)."""
