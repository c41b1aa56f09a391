def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

if __name__ == "__main__":
    print(f"{fib(30)=}", **{'sep': '\t'})
    xs = [x ** 2 for x in range(10) if x % 3 != 0]  # squares
