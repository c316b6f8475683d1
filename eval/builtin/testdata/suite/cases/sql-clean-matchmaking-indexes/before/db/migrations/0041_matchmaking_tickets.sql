-- 0041_matchmaking_tickets.sql
CREATE TABLE dbo.MatchmakingTickets (
    TicketId      UNIQUEIDENTIFIER NOT NULL CONSTRAINT PK_MatchmakingTickets PRIMARY KEY,
    PlayerId      BIGINT           NOT NULL,
    Queue         NVARCHAR(32)     NOT NULL,
    Region        NVARCHAR(16)     NOT NULL,
    SkillRating   INT              NOT NULL,
    CreatedAt     DATETIME2(3)     NOT NULL CONSTRAINT DF_MatchmakingTickets_CreatedAt DEFAULT SYSUTCDATETIME(),
    MatchedAt     DATETIME2(3)     NULL,
    MatchId       BIGINT           NULL
);
GO
