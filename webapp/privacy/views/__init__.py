"""The privacy center: `center` (`/privacy`, signed in) and `public` (the pages
reached from a mail link, no sign-in)."""
