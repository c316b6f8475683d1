# pathcache.py - caches navmesh path queries for the dedicated server.
#
# Queries are expensive (30-80 ms on the big maps) and the same few hundred
# routes repeat all match long, so results are cached per map revision.

import hashlib
import json
import logging
import pickle

import redis

log = logging.getLogger(__name__)

TTL_SECONDS = 6 * 3600


class PathCache:
    def __init__(self, url, map_name, map_revision):
        self._r = redis.Redis.from_url(url)
        self._prefix = f"navpath:{map_name}:{map_revision}:"

    def _key(self, start, goal, agent_radius):
        raw = json.dumps([start, goal, agent_radius]).encode()
        return self._prefix + hashlib.sha1(raw).hexdigest()

    def get(self, start, goal, agent_radius):
        blob = self._r.get(self._key(start, goal, agent_radius))
        if blob is None:
            return None
        return pickle.loads(blob)

    def put(self, start, goal, agent_radius, path):
        self._r.setex(
            self._key(start, goal, agent_radius),
            TTL_SECONDS,
            pickle.dumps(path, protocol=pickle.HIGHEST_PROTOCOL),
        )
