"""The library version (its own module so that low layers can read it without cycles)."""

__version__ = "0.1.0"
