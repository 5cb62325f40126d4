#!/bin/bash
# Runs inside the new root file system (chroot) at the end of build.sh; DESKTOP=1 for the
# desktop image. Everything the tests rely on about the guest is made here.
set -euxo pipefail
echo localauth-vm > /etc/hostname
printf '127.0.0.1 localhost\n127.0.1.1 localauth-vm\n::1 localhost ip6-localhost\n' > /etc/hosts
echo 'LABEL=localauth-vm / ext4 defaults,errors=remount-ro 0 1' > /etc/fstab
echo 'LANG=C.UTF-8' > /etc/default/locale

# qemu's user network (restrict=on): the guest is 10.0.2.15 and reaches nothing; the host's
# one forward leads to sshd.
cat > /etc/systemd/network/10-qemu-user.network <<'EOF'
[Match]
Name=en* eth*

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF
systemctl enable systemd-networkd.service ssh.service
# Nothing that starts on a timer during a test run (apt, man-db, fstrim, scrub).
systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
  man-db.timer e2scrub_all.timer fstrim.timer 2>/dev/null || true

# alice (alice-pw, in group sudo) and bob (bob-pw, no sudo). root's password is for the serial
# console only; the tests log in as root and alice by the key build.sh made.
echo root:root | chpasswd
useradd -m -s /bin/bash -G sudo alice
echo alice:alice-pw | chpasswd
useradd -m -s /bin/bash bob
echo bob:bob-pw | chpasswd
for h in /root /home/alice; do
  install -d -m 700 "$h/.ssh"
  install -m 600 /tmp/authorized_keys "$h/.ssh/authorized_keys"
done
# alice's own key for an SSH login to the guest itself (the loopback case).
ssh-keygen -q -t ed25519 -N '' -C alice@localauth-vm -f /home/alice/.ssh/id_ed25519
cat /home/alice/.ssh/id_ed25519.pub >> /home/alice/.ssh/authorized_keys
chown -R alice:alice /home/alice/.ssh

# fprintd with libfprint's virtual reader: "SCAN <id>" written to /run/fprint-virt.sock.
# The unit has ProtectSystem=strict, so the socket's directory must be writable for it.
mkdir -p /etc/systemd/system/fprintd.service.d
cat > /etc/systemd/system/fprintd.service.d/virtual-device.conf <<'EOF'
[Service]
Environment=FP_DRIVERS_ALLOWLIST=virtual_device
Environment=FP_VIRTUAL_DEVICE=/run/fprint-virt.sock
ReadWritePaths=/run
EOF

# alice is logged in on the VGA console (tty1) at every boot: a local session on seat0.
mkdir -p /etc/systemd/system/getty@tty1.service.d
cat > /etc/systemd/system/getty@tty1.service.d/autologin.conf <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty -o '-p -f -- \\u' --noclear --autologin alice %I $TERM
EOF

if [ "${DESKTOP:-0}" = 1 ]; then
  # gdm3 takes tty1 when it runs; it runs only when booted into graphical.target.
  systemctl set-default multi-user.target
  # GDM's own fingerprint conversation off, at the greeter and at the lock screen (the
  # user's settings): with the pam-auth-update profiles, gdm-password is finger-first
  # itself, and two conversations would both want the reader (README, "Callers on a
  # desktop").
  # Debian's greeter reads no system db: its profile (/usr/share/dconf/profile/gdm) names
  # only /var/lib/gdm3/greeter-dconf-defaults, which gdm.service compiles from
  # /usr/share/gdm/dconf at each start (/etc/gdm3/greeter.dconf-defaults is linked there).
  # With the setting unseen, the greeter runs gdm-fingerprint beside gdm-password; its
  # pam_fprintd.so is not installed, that conversation fails at once, and each failure can
  # end the password's conversation too ("conversation failed").
  printf '[org/gnome/login-screen]\nenable-fingerprint-authentication=false\n' \
    > /usr/share/gdm/dconf/95-localauth-settings
  mkdir -p /etc/dconf/db/local.d /etc/dconf/profile
  printf '[org/gnome/login-screen]\nenable-fingerprint-authentication=false\n' \
    > /etc/dconf/db/local.d/90-localauth
  # No blank screen on idle: the session's idle time counts from the greeter's last key,
  # GNOME locks the screen when it blanks it (after 5 min), and beside a busy host the first
  # login alone took over 4 min: the keys meant for the overview then met the lock screen.
  # The lock screen's cases lock it themselves (loginctl lock-session).
  printf '[org/gnome/desktop/session]\nidle-delay=uint32 0\n' \
    > /etc/dconf/db/local.d/92-localauth-no-idle
  printf 'user-db:user\nsystem-db:local\n' > /etc/dconf/profile/user
  dconf update
  # Nothing in the session that only burns the emulated CPU: gsd-usb-protection (it asks
  # USBGuard, which is not installed; on Debian 12 it crash-looped at each login) and
  # localsearch's file indexer (a minute of CPU under TCG; nothing here searches files).
  systemctl --global mask org.gnome.SettingsDaemon.UsbProtection.service localsearch-3.service
fi

apt-get clean
rm -rf /var/lib/apt/lists/*
