def backoff(attempt):
<<<<<<< .mine
    return min(2 ** attempt, 60)
=======
    return min(3 ** attempt, 120)
>>>>>>> .r7
