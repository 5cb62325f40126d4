import LocalAuth
