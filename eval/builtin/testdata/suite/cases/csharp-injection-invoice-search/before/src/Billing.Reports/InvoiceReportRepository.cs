using System;
using System.Collections.Generic;
using System.Data;
using System.Data.SqlClient;

namespace Contoso.Billing.Reports
{
    /// <summary>Reads invoice rows for the finance dashboard.</summary>
    public sealed class InvoiceReportRepository
    {
        private readonly string _connectionString;

        public InvoiceReportRepository(string connectionString)
        {
            _connectionString = connectionString ?? throw new ArgumentNullException(nameof(connectionString));
        }

        public IReadOnlyList<InvoiceRow> ForCustomer(int customerId, DateTime from, DateTime to)
        {
            const string sql =
                "SELECT InvoiceId, IssuedAt, Total, Status FROM dbo.Invoices " +
                "WHERE CustomerId = @customerId AND IssuedAt >= @from AND IssuedAt < @to " +
                "ORDER BY IssuedAt";

            using (var conn = new SqlConnection(_connectionString))
            using (var cmd = new SqlCommand(sql, conn))
            {
                cmd.Parameters.Add("@customerId", SqlDbType.Int).Value = customerId;
                cmd.Parameters.Add("@from", SqlDbType.DateTime2).Value = from;
                cmd.Parameters.Add("@to", SqlDbType.DateTime2).Value = to;
                conn.Open();
                return ReadRows(cmd);
            }
        }

        private static List<InvoiceRow> ReadRows(SqlCommand cmd)
        {
            var rows = new List<InvoiceRow>();
            using (var reader = cmd.ExecuteReader())
            {
                while (reader.Read())
                {
                    rows.Add(new InvoiceRow(
                        reader.GetInt32(0),
                        reader.GetDateTime(1),
                        reader.GetDecimal(2),
                        reader.GetString(3)));
                }
            }
            return rows;
        }
    }
}
