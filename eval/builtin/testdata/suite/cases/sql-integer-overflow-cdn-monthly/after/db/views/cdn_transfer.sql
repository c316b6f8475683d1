-- Daily bandwidth report for the CDN bill reconciliation.
-- Table dbo.CdnTransfer has one row per edge node per 5-minute bucket.
--
--   BytesOut INT    bytes served in the bucket (at most ~1.2 GB per node)

CREATE OR ALTER VIEW dbo.vw_CdnDailyTransfer
AS
SELECT
    CAST(t.BucketStart AS DATE) AS [Day],
    t.Region,
    COUNT(*) AS Buckets,
    SUM(CAST(t.BytesOut AS BIGINT)) AS BytesOut
FROM dbo.CdnTransfer AS t
GROUP BY CAST(t.BucketStart AS DATE), t.Region;
GO

CREATE OR ALTER VIEW dbo.vw_CdnMonthlyTransfer
AS
SELECT
    DATEFROMPARTS(YEAR(t.BucketStart), MONTH(t.BucketStart), 1) AS [Month],
    t.Region,
    SUM(t.BytesOut) / 1073741824.0 AS GiBOut,
    MAX(t.BytesOut) AS PeakBucketBytes
FROM dbo.CdnTransfer AS t
GROUP BY DATEFROMPARTS(YEAR(t.BucketStart), MONTH(t.BucketStart), 1), t.Region;
GO
