"""The account pages, one module per screen: `auth` (sign-up, sign-in,
sign-out, the links from account mails) and `reset` (forgot password)."""
