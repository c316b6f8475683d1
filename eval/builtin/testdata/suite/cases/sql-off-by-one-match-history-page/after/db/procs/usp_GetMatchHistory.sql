-- dbo.usp_GetMatchHistory: a player's matches, newest first, for the
-- profile page.
CREATE OR ALTER PROCEDURE dbo.usp_GetMatchHistory
    @PlayerId  BIGINT,
    @Page      INT = 1,
    @PageSize  INT = 20
AS
BEGIN
    SET NOCOUNT ON;

    IF @Page < 1 OR @PageSize NOT BETWEEN 1 AND 100
        THROW 50002, 'Page must be >= 1 and PageSize between 1 and 100', 1;

    WITH numbered AS (
        SELECT
            ROW_NUMBER() OVER (ORDER BY m.StartedAt DESC, m.MatchId DESC) AS rn,
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
    )
    SELECT MatchId, Mode, MapName, StartedAt, Placement, Kills, Deaths
    FROM numbered
    WHERE rn BETWEEN (@Page - 1) * @PageSize AND @Page * @PageSize
    ORDER BY rn;
END;
GO
