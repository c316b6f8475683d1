def backoff(attempt):
    return min(2 ** attempt, 60)
