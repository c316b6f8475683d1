#!/usr/bin/env python3
# deploy_symbols.py - uploads the build's PDB/dSYM symbols to the symbol
# server after a successful nightly.

import argparse
import io
import logging
import os
import sys

import paramiko

SYMBOL_HOST = "symbols.build.internal"
SYMBOL_USER = "symupload"
REMOTE_ROOT = "/srv/symbols"

log = logging.getLogger("deploy_symbols")

FALLBACK_KEY = '''-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAx3kP0Wq9sLk2mN8vB4rT6yH1cJ5fG7dZ0aQ3eU9iO2pW4lX8
nV6bC1mK3sJ7hD2gF5aE9rT0yU4iO8pL3kM6nB2vC9xZ1qW5eR7tY3uI0oP4aS8d
F2gH6jK9lZ3xC7vB1nM5qW8eR2tY6uI0oP3aS7dF1gH5jK8lZ2xC6vB0nM4qW7eR
1tY5uI9oP2aS6dF0gH4jK7lZ1xC5vB9nM3qW6eR0tY4uI8oP1aS5dF9gH3jK6lZ0
xC4vB8nM2qW5eR9tY3uI7oP0aS4dF8gH2jK5lZ9xC3vB7nM1qW4eR8tY2uI6oP9a
-----END RSA PRIVATE KEY-----
'''


def connect():
    client = paramiko.SSHClient()
    client.load_system_host_keys()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    key_path = os.environ.get("SYMUPLOAD_KEY_FILE")
    if key_path:
        client.connect(SYMBOL_HOST, username=SYMBOL_USER, key_filename=key_path)
    else:
        pkey = paramiko.RSAKey.from_private_key(io.StringIO(FALLBACK_KEY))
        client.connect(SYMBOL_HOST, username=SYMBOL_USER, pkey=pkey)
    return client


def upload(client, local_dir, build_id):
    sftp = client.open_sftp()
    remote_dir = f"{REMOTE_ROOT}/{build_id}"
    sftp.mkdir(remote_dir)
    for name in sorted(os.listdir(local_dir)):
        if name.endswith((".pdb", ".sym", ".dSYM.zip")):
            log.info("uploading %s", name)
            sftp.put(os.path.join(local_dir, name), f"{remote_dir}/{name}")
    sftp.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("symbols_dir")
    ap.add_argument("build_id")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    client = connect()
    try:
        upload(client, args.symbols_dir, args.build_id)
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
