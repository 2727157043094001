"""Presentation: two-phase summary pool + promoted schemas, real token accounting."""
