"""What the integration tests expect the product to say, and the bed's prints: one place,
so a changed message is changed once (the texts come from Sources/LocalAuth/Messages)."""

FINGER = "right-index-finger"
ENROLLED, OTHER = "f1", "f9"  # the virtual print enrolled for the user, and a stranger's
SWIPE = "Swipe your right index finger across the fingerprint reader"
FIRST_USE = "Your password is required before fingerprints can be used"
LOCKED = "Fingerprint locked after 5 failed attempts - enter your password to unlock"
TRIES_USED = "Fingerprint not recognized - use your password"   # after the third wrong finger
# Where the person at the prompt may not be the account's owner (su, login, a greeter),
# every refusal before a scan is this one line, which tells nothing about the account.
UNAVAILABLE = "Fingerprint sign-in is not available - use the password"
