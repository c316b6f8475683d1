/*
 * crc16.c - CRC-16/CCITT-FALSE for the bootloader image header and the
 * field bus frames.
 */
#include <stddef.h>
#include <stdint.h>
#include "crc16.h"

#define CRC16_POLY 0x1021u
#define CRC16_INIT 0xFFFFu

uint16_t crc16_update(uint16_t crc, const uint8_t *data, size_t len)
{
    size_t i;
    int bit;

    for (i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint16_t)data[i] << 8);
        for (bit = 0; bit < 8; bit++) {
            if (crc & 0x8000u) {
                crc = (uint16_t)((crc << 1) ^ CRC16_POLY);
            } else {
                crc = (uint16_t)(crc << 1);
            }
        }
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
