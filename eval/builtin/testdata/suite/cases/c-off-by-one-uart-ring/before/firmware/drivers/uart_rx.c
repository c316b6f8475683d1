/*
 * uart_rx.c - interrupt-driven receive ring for the debug UART.
 *
 * The ISR is the only producer, the main loop the only consumer, so head
 * and tail need no lock as long as each is written by one side only.
 */
#include <stdint.h>
#include <stdbool.h>
#include "board.h"
#include "uart_rx.h"

#define RX_RING_SIZE 128u

static volatile uint8_t rx_ring[RX_RING_SIZE];
static volatile uint16_t rx_head; /* written by the ISR */
static volatile uint16_t rx_tail; /* written by the main loop */
static volatile uint32_t rx_overruns;

void uart_rx_init(void)
{
    rx_head = 0;
    rx_tail = 0;
    rx_overruns = 0;
    UART1->CR1 |= UART_CR1_RXNEIE;
    NVIC_EnableIRQ(UART1_IRQn);
}

void UART1_IRQHandler(void)
{
    while (UART1->SR & UART_SR_RXNE) {
        uint8_t byte = (uint8_t)UART1->DR;
        uint16_t next = (uint16_t)((rx_head + 1u) % RX_RING_SIZE);

        if (next == rx_tail) {
            rx_overruns++;
            continue;
        }
        rx_ring[rx_head] = byte;
        rx_head = next;
    }
}

bool uart_rx_pop(uint8_t *out)
{
    if (rx_tail == rx_head) {
        return false;
    }
    *out = rx_ring[rx_tail];
    rx_tail = (uint16_t)((rx_tail + 1u) % RX_RING_SIZE);
    return true;
}

uint16_t uart_rx_available(void)
{
    uint16_t head = rx_head;
    uint16_t tail = rx_tail;

    if (head >= tail) {
        return (uint16_t)(head - tail);
    }
    return (uint16_t)(RX_RING_SIZE - tail + head);
}

uint32_t uart_rx_overruns(void)
{
    return rx_overruns;
}
