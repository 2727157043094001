"""What ``toolroute add`` uses, in one module the command imports when it runs (the other
commands start without the registry's client and the config loader)."""

from __future__ import annotations

from toolroute.registry.client import RegistryClient
from toolroute.registry.install import plan, write
from toolroute.registry.policy import Pins, allowed, flags, known_packages

__all__ = ["Pins", "RegistryClient", "allowed", "flags", "known_packages", "plan", "write"]
