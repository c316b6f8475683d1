/*
 * crc16.c - CRC-16/CCITT-FALSE for the bootloader image header and the
 * field bus frames.
 *
 * Table driven: one lookup per byte instead of eight shifts. The table is
 * generated at build time by tools/gen_crc_table.py and checked against
 * the bitwise reference in test/test_crc16.c.
 */
#include <stddef.h>
#include <stdint.h>
#include "crc16.h"
#include "crc16_table.h"

#define CRC16_INIT 0xFFFFu

uint16_t crc16_update(uint16_t crc, const uint8_t *data, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        uint8_t idx = (uint8_t)((crc >> 8) ^ data[i]);

        crc = (uint16_t)((crc << 8) ^ crc16_table[idx]);
    }
    return crc;
}

uint16_t crc16(const uint8_t *data, size_t len)
{
    return crc16_update(CRC16_INIT, data, len);
}

int crc16_check_frame(const uint8_t *frame, size_t len)
{
    uint16_t want;

    if (len < 2) {
        return 0;
    }
    want = (uint16_t)((frame[len - 2] << 8) | frame[len - 1]);
    return crc16(frame, len - 2) == want;
}
