"""Debian 12 (bookworm) in the guest: kernel 6.1, systemd 252, polkit 122, sudo 1.9.13.

Chosen cases of test_presence.py, run unchanged against a guest of the release before
(its base flavour: no desktop). What differs there is below the callers: Linux 6.1 has no
SO_PEERPIDFD, so localauthd pins each peer by its pid (Peer.swift); sudo and polkit's agent
helper are setuid (real uid the user's, effective uid 0), the callers the service must still
recognise as the peer that connected; the ssh-agent socket's peers are pinned by pid too.
Polkit 122 ships no /etc/pam.d/polkit-1: its agent helper runs ``other`` (common-auth with
the pam-auth-update lines), and pkexec's own text agent fails ("No session for cookie"), so
pkexec runs with pkttyagent (la-pkexec).

The guest is prepared as test_presence.py's (conftest.py: the .deb installed, the profiles
enabled, the password once this boot); the packaged localauthd, socket-activated under
systemd 252, answers every case.
"""
from __future__ import annotations

# In test_presence.py's order; the service's own case, which stops it, last.
from test_presence import (  # noqa: F401, I001 - collected here, against this file's guest
    test_console_sudo_takes_the_finger,
    test_sudo_in_a_gnome_shaped_terminal_takes_the_finger,
    test_pkexec_with_pkttyagent_in_the_local_session_takes_the_finger,
    test_an_agent_request_from_alice_s_ssh_session_gets_no_scan_and_her_next_local_one_does,
    test_console_sudo_goes_through_the_packaged_localauthd_which_its_socket_restarts,
)

# Read by conftest.py's image fixture.
GUEST_SUITE = "bookworm"
GUEST_DESKTOP = False
