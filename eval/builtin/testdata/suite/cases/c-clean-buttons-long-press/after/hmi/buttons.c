/*
 * buttons.c - front panel buttons on the HMI board.
 *
 * Polled from the 1 ms SysTick; a button is pressed once its input has
 * read low for DEBOUNCE_MS consecutive ticks.
 */
#include <stdbool.h>
#include <stdint.h>
#include "board.h"
#include "buttons.h"

#define DEBOUNCE_MS 20u
#define LONG_PRESS_MS 2000u

static uint8_t stable_state;   /* bit n: button n pressed */
static uint8_t press_events;   /* bit n: pressed since last buttons_take */
static uint8_t long_events;    /* bit n: held LONG_PRESS_MS since last take */
static uint8_t counters[BUTTON_COUNT];
static uint16_t held_ms[BUTTON_COUNT];

static bool raw_pressed(unsigned n)
{
    return (GPIOB->IDR & (1u << button_pins[n])) == 0;
}

void buttons_tick(void)
{
    unsigned n;

    for (n = 0; n < BUTTON_COUNT; n++) {
        bool pressed = raw_pressed(n);
        bool was = (stable_state & (1u << n)) != 0;

        if (pressed == was) {
            counters[n] = 0;
            if (was && held_ms[n] < LONG_PRESS_MS && ++held_ms[n] == LONG_PRESS_MS) {
                long_events |= (uint8_t)(1u << n);
            }
            continue;
        }
        if (++counters[n] >= DEBOUNCE_MS) {
            counters[n] = 0;
            if (pressed) {
                stable_state |= (uint8_t)(1u << n);
                press_events |= (uint8_t)(1u << n);
            } else {
                stable_state &= (uint8_t)~(1u << n);
            }
            held_ms[n] = 0;
        }
    }
}

uint8_t buttons_take(void)
{
    uint8_t ev;

    __disable_irq();
    ev = press_events;
    press_events = 0;
    __enable_irq();
    return ev;
}

uint8_t buttons_take_long(void)
{
    uint8_t ev;

    __disable_irq();
    ev = long_events;
    long_events = 0;
    __enable_irq();
    return ev;
}

bool button_held(unsigned n)
{
    return n < BUTTON_COUNT && (stable_state & (1u << n)) != 0;
}
