"""triton_helpers"""
