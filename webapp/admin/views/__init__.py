"""The operations console's screens, one module each."""
