using System;
using System.Net;
using System.Net.Http;
using System.Threading;
using System.Threading.Tasks;

namespace Contoso.Integration.Erp
{
    public sealed class ErpClient
    {
        private const int MaxAttempts = 3;

        private readonly HttpClient _http;

        public ErpClient(HttpClient http)
        {
            _http = http ?? throw new ArgumentNullException(nameof(http));
        }

        public Task<string> GetOrderJson(string orderNo, CancellationToken ct) =>
            GetWithRetry($"orders/{Uri.EscapeDataString(orderNo)}", ct);

        public Task<string> GetStockJson(string sku, CancellationToken ct) =>
            GetWithRetry($"stock/{Uri.EscapeDataString(sku)}", ct);

        // The ERP's gateway answers 503 and 504 while a batch job holds the
        // order tables; those clear within seconds, anything else does not.
        private static bool IsTransient(HttpStatusCode status) =>
            status == HttpStatusCode.ServiceUnavailable || status == HttpStatusCode.GatewayTimeout;

        private async Task<string> GetWithRetry(string relativeUri, CancellationToken ct)
        {
            for (int attempt = 1; ; attempt++)
            {
                using (var resp = await _http.GetAsync(relativeUri, ct))
                {
                    if (resp.IsSuccessStatusCode)
                    {
                        return await resp.Content.ReadAsStringAsync();
                    }
                    if (attempt >= MaxAttempts || !IsTransient(resp.StatusCode))
                    {
                        resp.EnsureSuccessStatusCode();
                    }
                }
                await Task.Delay(TimeSpan.FromSeconds(attempt * 2), ct);
            }
        }
    }
}
