"""fib.py: a small Python program for the README's tour (nanoprobe run --python)."""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


if __name__ == "__main__":
    print("fib(15) =", fib(15))
