"""Data files that ship with Ember (DIGITS.md gives the digits data set's source and licence)."""
