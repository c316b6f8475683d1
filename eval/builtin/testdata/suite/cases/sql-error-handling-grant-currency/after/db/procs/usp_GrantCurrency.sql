-- dbo.usp_GrantCurrency: support/compensation grants of premium currency.
CREATE OR ALTER PROCEDURE dbo.usp_GrantCurrency
    @PlayerId   BIGINT,
    @Amount     INT,
    @Reason     NVARCHAR(200),
    @GrantedBy  NVARCHAR(64)
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;

    IF @Amount <= 0 OR @Amount > 100000
        THROW 50010, 'Amount must be between 1 and 100000', 1;

    BEGIN TRY
        BEGIN TRANSACTION;

        UPDATE dbo.Wallets
        SET Premium = Premium + @Amount
        WHERE PlayerId = @PlayerId;

        IF @@ROWCOUNT = 0
            THROW 50011, 'Player has no wallet', 1;

        INSERT INTO dbo.WalletLedger (PlayerId, Delta, Reason, Actor, CreatedAt)
        VALUES (@PlayerId, @Amount, @Reason, @GrantedBy, SYSUTCDATETIME());

        COMMIT TRANSACTION;
        RETURN 0;
    END TRY
    BEGIN CATCH
        INSERT INTO dbo.SupportErrors (Proc, PlayerId, ErrorNumber, ErrorMessage, CreatedAt)
        VALUES (N'usp_GrantCurrency', @PlayerId, ERROR_NUMBER(), ERROR_MESSAGE(), SYSUTCDATETIME());
        RETURN 1;
    END CATCH;
END;
GO
