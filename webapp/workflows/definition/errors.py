"""The error a wrong definition raises, when it is defined."""


class DefinitionError(ValueError):
    """A workflow definition is invalid (raised when it is defined)."""
