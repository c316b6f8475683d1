package com.acme.orders.pricing;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.List;

import com.acme.orders.model.OrderLine;

/**
 * Order totals. All amounts are in the order's currency with two decimals,
 * rounded half-even as the ERP does.
 */
public final class OrderTotals {

    private static final int SCALE = 2;
    private static final RoundingMode ROUNDING = RoundingMode.HALF_EVEN;

    private OrderTotals() {
    }

    public static BigDecimal subtotal(List<OrderLine> lines) {
        return lines.stream()
                .map(OrderTotals::lineAmount)
                .reduce(BigDecimal.ZERO, BigDecimal::add)
                .setScale(SCALE, ROUNDING);
    }

    /**
     * The discount on a subtotal: {@code percent} is 0 to 100, and the
     * result never exceeds the subtotal.
     */
    public static BigDecimal discount(BigDecimal subtotal, BigDecimal percent) {
        if (percent.signum() < 0 || percent.compareTo(BigDecimal.valueOf(100)) > 0) {
            throw new IllegalArgumentException("discount percent out of range: " + percent);
        }
        return subtotal.multiply(percent)
                .divide(BigDecimal.valueOf(100), SCALE, ROUNDING);
    }

    public static BigDecimal tax(BigDecimal subtotal, BigDecimal rate) {
        return subtotal.multiply(rate).setScale(SCALE, ROUNDING);
    }

    private static BigDecimal lineAmount(OrderLine line) {
        return line.getUnitPrice().multiply(BigDecimal.valueOf(line.getQuantity()));
    }
}
