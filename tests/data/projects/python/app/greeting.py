import greet


def greeting():
    return greet.hello("wrld")
