package com.acme.portal.session;

import java.time.Duration;
import java.util.Optional;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPool;

/**
 * Stores portal sessions in Redis so any node behind the balancer can serve
 * a user. Values are JSON written by SessionCodec.
 */
public class RedisSessionStore implements SessionStore {

    private static final Duration TTL = Duration.ofHours(8);

    private final JedisPool pool;
    private final SessionCodec codec;

    public RedisSessionStore(JedisPool pool, SessionCodec codec) {
        this.pool = pool;
        this.codec = codec;
    }

    @Override
    public Optional<Session> load(String sessionId) {
        try (Jedis jedis = pool.getResource()) {
            String json = jedis.get(key(sessionId));
            return json == null ? Optional.empty() : Optional.of(codec.decode(json));
        }
    }

    @Override
    public void save(Session session) {
        try (Jedis jedis = pool.getResource()) {
            jedis.setex(key(session.getId()), TTL.getSeconds(), codec.encode(session));
        }
    }

    private static String key(String sessionId) {
        return "portal:session:" + sessionId;
    }
}
