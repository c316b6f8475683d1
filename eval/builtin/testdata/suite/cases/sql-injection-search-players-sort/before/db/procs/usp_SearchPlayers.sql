-- dbo.usp_SearchPlayers: support tool lookup of player accounts.
-- Called by the CS portal with the agent's search text.
CREATE OR ALTER PROCEDURE dbo.usp_SearchPlayers
    @Search    NVARCHAR(100),
    @MaxRows   INT = 50
AS
BEGIN
    SET NOCOUNT ON;

    IF @MaxRows NOT BETWEEN 1 AND 500
        THROW 50001, 'MaxRows must be between 1 and 500', 1;

    SELECT TOP (@MaxRows)
        p.PlayerId,
        p.DisplayName,
        p.Email,
        p.Platform,
        p.CreatedAt,
        p.BannedUntil
    FROM dbo.Players AS p
    WHERE p.DisplayName LIKE @Search + N'%'
       OR p.Email = @Search
    ORDER BY p.DisplayName;
END;
GO
