"""The account pages, one module per screen: `auth` (sign-up, sign-in,
sign-out, the links from account mails), `reset` (forgot password) and
`signin_code` (sign-in by emailed code)."""
