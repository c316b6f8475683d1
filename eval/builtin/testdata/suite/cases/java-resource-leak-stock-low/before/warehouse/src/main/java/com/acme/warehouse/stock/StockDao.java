package com.acme.warehouse.stock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

public class StockDao {

    private final DataSource dataSource;

    public StockDao(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public int onHand(String sku, int warehouseId) throws SQLException {
        String sql = "SELECT qty_on_hand FROM stock WHERE sku = ? AND warehouse_id = ?";
        try (Connection conn = dataSource.getConnection();
             PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setString(1, sku);
            ps.setInt(2, warehouseId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        }
    }

    public void adjust(String sku, int warehouseId, int delta, String reason) throws SQLException {
        String sql = "UPDATE stock SET qty_on_hand = qty_on_hand + ?, updated_reason = ? "
                + "WHERE sku = ? AND warehouse_id = ?";
        try (Connection conn = dataSource.getConnection();
             PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setInt(1, delta);
            ps.setString(2, reason);
            ps.setString(3, sku);
            ps.setInt(4, warehouseId);
            ps.executeUpdate();
        }
    }
}
