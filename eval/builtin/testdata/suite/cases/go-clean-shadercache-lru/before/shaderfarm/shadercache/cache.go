// Package shadercache keeps compiled shader blobs in memory for the
// build farm's shader compile service.
package shadercache

import "sync"

type entry struct {
	key  string
	blob []byte
}

// Cache is a fixed-capacity map of compiled shaders. Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*entry
}

func New(max int) *Cache {
	return &Cache{max: max, entries: make(map[string]*entry, max)}
}

func (c *Cache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	return e.blob, true
}

// Put stores blob; when the cache is full it drops an arbitrary entry.
func (c *Cache) Put(key string, blob []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = &entry{key: key, blob: blob}
}

func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
