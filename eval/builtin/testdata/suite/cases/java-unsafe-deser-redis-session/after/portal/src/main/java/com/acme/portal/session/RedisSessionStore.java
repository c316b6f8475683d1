package com.acme.portal.session;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
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
            byte[] raw = jedis.get(key(sessionId).getBytes(StandardCharsets.UTF_8));
            if (raw == null) {
                return Optional.empty();
            }
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(raw))) {
                return Optional.of((Session) in.readObject());
            } catch (IOException | ClassNotFoundException e) {
                throw new IllegalStateException("corrupt session " + sessionId, e);
            }
        }
    }

    @Override
    public void save(Session session) {
        try (Jedis jedis = pool.getResource()) {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(buf)) {
                out.writeObject(session);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            jedis.setex(key(session.getId()).getBytes(StandardCharsets.UTF_8), TTL.getSeconds(), buf.toByteArray());
        }
    }

    private static String key(String sessionId) {
        return "portal:session:" + sessionId;
    }
}
