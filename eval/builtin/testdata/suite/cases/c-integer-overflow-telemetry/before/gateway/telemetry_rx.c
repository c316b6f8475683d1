/*
 * telemetry_rx.c - decodes the batch frames the sensor hubs send over TCP.
 *
 * Frame: u16 magic, u16 version, u32 count, then count records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "endian_util.h"
#include "telemetry.h"

#define FRAME_MAGIC 0x5448u
#define FRAME_HDR_LEN 8u

struct tm_record {
    uint32_t sensor_id;
    uint32_t timestamp;
    int32_t value;
    uint32_t flags;
};

int tm_decode_frame(const uint8_t *buf, size_t len, struct tm_batch *out)
{
    uint16_t magic;
    uint16_t version;
    uint32_t count;
    const uint8_t *p;
    size_t i;

    if (len < FRAME_HDR_LEN) {
        return TM_ERR_SHORT;
    }
    magic = be16_read(buf);
    version = be16_read(buf + 2);
    count = be32_read(buf + 4);
    if (magic != FRAME_MAGIC) {
        return TM_ERR_MAGIC;
    }
    if (version != 1) {
        return TM_ERR_VERSION;
    }
    if (count > TM_MAX_RECORDS) {
        return TM_ERR_TOO_MANY;
    }
    if (len - FRAME_HDR_LEN < (size_t)count * 16u) {
        return TM_ERR_SHORT;
    }

    out->records = calloc(count, sizeof(struct tm_record));
    if (out->records == NULL) {
        return TM_ERR_NOMEM;
    }
    out->count = count;

    p = buf + FRAME_HDR_LEN;
    for (i = 0; i < count; i++) {
        struct tm_record *r = &out->records[i];

        r->sensor_id = be32_read(p);
        r->timestamp = be32_read(p + 4);
        r->value = (int32_t)be32_read(p + 8);
        r->flags = be32_read(p + 12);
        p += 16;
    }
    return TM_OK;
}

void tm_batch_free(struct tm_batch *b)
{
    free(b->records);
    b->records = NULL;
    b->count = 0;
}
