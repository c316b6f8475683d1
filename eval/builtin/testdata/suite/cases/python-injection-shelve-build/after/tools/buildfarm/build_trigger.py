#!/usr/bin/env python3
# build_trigger.py - small web hook the build farm exposes to the P4 trigger
# and to the "rebuild" button on the dashboard.

import logging
import os
import subprocess

from flask import Flask, abort, jsonify, request

app = Flask(__name__)
log = logging.getLogger("build_trigger")

BUILD_ROOT = os.environ.get("BUILD_ROOT", "/srv/builds")
ALLOWED_TARGETS = {"win64", "ps5", "xsx", "switch", "linux-server"}


def start_build(target, changelist):
    workdir = os.path.join(BUILD_ROOT, target)
    cmd = ["/opt/buildtools/run_build.sh", "--target", target, "--cl", str(changelist)]
    log.info("starting %s at CL %s", target, changelist)
    return subprocess.Popen(cmd, cwd=workdir)


def start_shelf_build(target, shelf, user):
    workdir = os.path.join(BUILD_ROOT, target)
    cmd = (
        f"p4 unshelve -s {shelf} -f && "
        f"/opt/buildtools/run_build.sh --target {target} --label 'try-{user}-{shelf}'"
    )
    log.info("try build of shelf %s for %s", shelf, user)
    return subprocess.Popen(cmd, cwd=workdir, shell=True)


@app.post("/try")
def try_build():
    body = request.get_json(force=True)
    target = body.get("target")
    if target not in ALLOWED_TARGETS:
        abort(400, f"unknown target {target!r}")
    proc = start_shelf_build(target, body.get("shelf"), body.get("user", "unknown"))
    return jsonify({"pid": proc.pid})


@app.post("/build")
def build():
    body = request.get_json(force=True)
    target = body.get("target")
    if target not in ALLOWED_TARGETS:
        abort(400, f"unknown target {target!r}")
    try:
        changelist = int(body.get("changelist"))
    except (TypeError, ValueError):
        abort(400, "changelist must be a number")
    proc = start_build(target, changelist)
    return jsonify({"pid": proc.pid})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    app.run(host="0.0.0.0", port=8087)
