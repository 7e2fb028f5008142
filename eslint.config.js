import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.tap/**']
  }),
  {
    rules: {
      '@stylistic/comma-dangle': ['error', 'never']
    }
  }
]
