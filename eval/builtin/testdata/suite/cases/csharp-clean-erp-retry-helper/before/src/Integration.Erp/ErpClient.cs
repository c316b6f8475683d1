using System;
using System.Net;
using System.Net.Http;
using System.Threading;
using System.Threading.Tasks;

namespace Contoso.Integration.Erp
{
    public sealed class ErpClient
    {
        private readonly HttpClient _http;

        public ErpClient(HttpClient http)
        {
            _http = http ?? throw new ArgumentNullException(nameof(http));
        }

        public async Task<string> GetOrderJson(string orderNo, CancellationToken ct)
        {
            for (int attempt = 1; ; attempt++)
            {
                using (var resp = await _http.GetAsync($"orders/{Uri.EscapeDataString(orderNo)}", ct))
                {
                    if (resp.IsSuccessStatusCode)
                    {
                        return await resp.Content.ReadAsStringAsync();
                    }
                    if (attempt >= 3 || (resp.StatusCode != HttpStatusCode.ServiceUnavailable && resp.StatusCode != HttpStatusCode.GatewayTimeout))
                    {
                        resp.EnsureSuccessStatusCode();
                    }
                }
                await Task.Delay(TimeSpan.FromSeconds(attempt * 2), ct);
            }
        }

        public async Task<string> GetStockJson(string sku, CancellationToken ct)
        {
            for (int attempt = 1; ; attempt++)
            {
                using (var resp = await _http.GetAsync($"stock/{Uri.EscapeDataString(sku)}", ct))
                {
                    if (resp.IsSuccessStatusCode)
                    {
                        return await resp.Content.ReadAsStringAsync();
                    }
                    if (attempt >= 3 || (resp.StatusCode != HttpStatusCode.ServiceUnavailable && resp.StatusCode != HttpStatusCode.GatewayTimeout))
                    {
                        resp.EnsureSuccessStatusCode();
                    }
                }
                await Task.Delay(TimeSpan.FromSeconds(attempt * 2), ct);
            }
        }
    }
}
