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

    private OrderTotals() {
    }

    public static BigDecimal subtotal(List<OrderLine> lines) {
        BigDecimal sum = BigDecimal.ZERO;
        for (OrderLine line : lines) {
            sum = sum.add(line.getUnitPrice().multiply(BigDecimal.valueOf(line.getQuantity())));
        }
        return sum.setScale(2, RoundingMode.HALF_EVEN);
    }

    public static BigDecimal tax(BigDecimal subtotal, BigDecimal rate) {
        return subtotal.multiply(rate).setScale(2, RoundingMode.HALF_EVEN);
    }
}
