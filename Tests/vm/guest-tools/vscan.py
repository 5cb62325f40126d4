#!/usr/bin/python3
"""Guest side (as root): libfprint's virtual reader at /run/fprint-virt.sock.

usage: vscan.py needed                 print fprintd's finger-needed (true/false/none)
       vscan.py wait [SECONDS]         wait until finger-needed is true (exit 1 on timeout)
       vscan.py scan ID [SECONDS]      wait for finger-needed, then send "SCAN ID"
       vscan.py send ID                send "SCAN ID" now (the caller knows a finger is
                                       wanted: the tests read la-fingerwatch's log)
       vscan.py enroll ID [N]          send "SCAN ID" N times (default 5), each once the
                                       device wants a finger
       vscan.py watch SECONDS          print every change of finger-needed for SECONDS
"""
import socket, subprocess, sys, time

SOCK = '/run/fprint-virt.sock'
DEV = '/net/reactivated/Fprint/Device/0'


def needed():
    try:
        out = subprocess.run(['busctl', '--system', 'get-property', 'net.reactivated.Fprint', DEV,
                              'net.reactivated.Fprint.Device', 'finger-needed'],
                             capture_output=True, text=True, timeout=3).stdout.strip()
    except subprocess.TimeoutExpired:
        return None
    return {'b true': True, 'b false': False}.get(out)


def wait(timeout, value=True):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if needed() is value:
            return True
        time.sleep(0.05)
    return False


def send(cmd, timeout=10):
    end = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(SOCK)
            s.sendall(cmd.encode())
            s.settimeout(timeout)
            try:
                while s.recv(4096):
                    pass
            except (socket.timeout, ConnectionResetError):
                pass
            return
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > end:
                raise SystemExit('socket %s refused %r' % (SOCK, cmd))
            time.sleep(0.05)
        finally:
            s.close()


def main(a):
    if len(a) < 2:
        print(__doc__); return 2
    if a[1] == 'needed':
        print({True: 'true', False: 'false', None: 'none'}[needed()]); return 0
    if a[1] == 'wait':
        return 0 if wait(float(a[2]) if len(a) > 2 else 20) else 1
    if a[1] == 'scan':
        t = float(a[3]) if len(a) > 3 else 20
        if not wait(t):
            print('no finger wanted within %gs' % t); return 1
        send('SCAN ' + a[2]); print('sent SCAN %s' % a[2]); return 0
    if a[1] == 'send':
        send('SCAN ' + a[2]); print('sent SCAN %s' % a[2]); return 0
    if a[1] == 'enroll':
        for i in range(int(a[3]) if len(a) > 3 else 5):
            if not wait(20):
                print('stage %d: no finger wanted' % i); return 1
            send('SCAN ' + a[2]); print('stage %d: sent SCAN %s' % (i + 1, a[2]))
            time.sleep(0.7)
        return 0
    if a[1] == 'watch':
        end = time.monotonic() + float(a[2]); last = object(); t0 = time.monotonic()
        while time.monotonic() < end:
            v = needed()
            if v != last:
                print('%6.2fs finger-needed=%s' % (time.monotonic() - t0, v), flush=True); last = v
            time.sleep(0.1)
        return 0
    print(__doc__); return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
