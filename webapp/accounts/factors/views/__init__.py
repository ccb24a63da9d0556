"""The second step of a sign-in, one module per way: `signin` (a code from the
app, a recovery code) and `passkey`."""
