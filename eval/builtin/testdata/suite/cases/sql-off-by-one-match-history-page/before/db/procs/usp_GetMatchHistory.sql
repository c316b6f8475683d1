-- dbo.usp_GetMatchHistory: a player's matches, newest first, for the
-- profile page.
CREATE OR ALTER PROCEDURE dbo.usp_GetMatchHistory
    @PlayerId  BIGINT,
    @Top       INT = 20
AS
BEGIN
    SET NOCOUNT ON;

    SELECT TOP (@Top)
        m.MatchId,
        m.Mode,
        m.MapName,
        m.StartedAt,
        mp.Placement,
        mp.Kills,
        mp.Deaths
    FROM dbo.MatchPlayers AS mp
    JOIN dbo.Matches AS m ON m.MatchId = mp.MatchId
    WHERE mp.PlayerId = @PlayerId
    ORDER BY m.StartedAt DESC;
END;
GO
