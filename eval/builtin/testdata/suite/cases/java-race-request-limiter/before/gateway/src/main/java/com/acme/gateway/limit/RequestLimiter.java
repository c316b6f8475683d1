package com.acme.gateway.limit;

import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/**
 * Per-API-key request counter for the public gateway: at most
 * {@code limit} requests per key per minute. One instance is shared by all
 * request threads.
 */
public class RequestLimiter {

    private final Clock clock;
    private final int limit;
    private final Map<String, Window> windows = new HashMap<>();

    public RequestLimiter(Clock clock, int limit) {
        this.clock = clock;
        this.limit = limit;
    }

    public synchronized boolean allow(String apiKey) {
        long minute = clock.millis() / 60_000L;
        Window w = windows.get(apiKey);
        if (w == null || w.minute != minute) {
            w = new Window(minute);
            windows.put(apiKey, w);
        }
        if (w.count >= limit) {
            return false;
        }
        w.count++;
        return true;
    }

    private static final class Window {
        final long minute;
        int count;

        Window(long minute) {
            this.minute = minute;
        }
    }
}
