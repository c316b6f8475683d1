-- dbo.usp_SearchPlayers: support tool lookup of player accounts.
-- Called by the CS portal with the agent's search text.
CREATE OR ALTER PROCEDURE dbo.usp_SearchPlayers
    @Search    NVARCHAR(100),
    @MaxRows   INT = 50,
    @SortBy    NVARCHAR(50) = N'DisplayName',
    @SortDir   NVARCHAR(4) = N'ASC'
AS
BEGIN
    SET NOCOUNT ON;

    IF @MaxRows NOT BETWEEN 1 AND 500
        THROW 50001, 'MaxRows must be between 1 and 500', 1;

    DECLARE @sql NVARCHAR(MAX) = N'
    SELECT TOP (@MaxRows)
        p.PlayerId,
        p.DisplayName,
        p.Email,
        p.Platform,
        p.CreatedAt,
        p.BannedUntil
    FROM dbo.Players AS p
    WHERE p.DisplayName LIKE @Search + N''%''
       OR p.Email = @Search
    ORDER BY p.' + @SortBy + N' ' + @SortDir + N';';

    EXEC sp_executesql @sql,
        N'@Search NVARCHAR(100), @MaxRows INT',
        @Search = @Search, @MaxRows = @MaxRows;
END;
GO
