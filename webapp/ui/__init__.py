"""What the screens share: one URL with two renderings (`pages`), sections and
their forms (`sections`, `forms`), the danger zone shown on two screens, and the
routes of no feature (`home`: the home page and the health check)."""
