package com.acme.orders.shipping;

import java.math.BigDecimal;
import java.util.Objects;

import com.acme.orders.customer.Address;
import com.acme.orders.customer.Customer;
import com.acme.orders.customer.CustomerRepository;
import com.acme.orders.model.Order;

/**
 * Computes shipping cost for an order from the carrier rate table.
 */
public class ShippingCalculator {

    private final CustomerRepository customers;
    private final RateTable rates;

    public ShippingCalculator(CustomerRepository customers, RateTable rates) {
        this.customers = Objects.requireNonNull(customers);
        this.rates = Objects.requireNonNull(rates);
    }

    public BigDecimal costFor(Order order) {
        Address dest = order.getShippingAddress();
        if (dest == null) {
            throw new IllegalArgumentException("order " + order.getId() + " has no shipping address");
        }
        BigDecimal base = rates.baseRate(dest.getCountryCode(), order.totalWeightGrams());
        if (order.isExpress()) {
            base = base.add(rates.expressSurcharge(dest.getCountryCode()));
        }
        return base;
    }
}
