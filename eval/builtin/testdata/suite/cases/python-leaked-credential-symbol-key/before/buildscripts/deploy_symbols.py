#!/usr/bin/env python3
# deploy_symbols.py - uploads the build's PDB/dSYM symbols to the symbol
# server after a successful nightly.

import argparse
import logging
import os
import sys

import paramiko

SYMBOL_HOST = "symbols.build.internal"
SYMBOL_USER = "symupload"
REMOTE_ROOT = "/srv/symbols"

log = logging.getLogger("deploy_symbols")


def connect():
    client = paramiko.SSHClient()
    client.load_system_host_keys()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    key_path = os.environ["SYMUPLOAD_KEY_FILE"]
    client.connect(SYMBOL_HOST, username=SYMBOL_USER, key_filename=key_path)
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
