// Entry point for `azd up` / `azd provision` (azure.yaml: infra.path = infra/azd). It deploys infra/main.bicep
// unchanged; this file exists so azd gets its own parameters file (main.parameters.json here, filled from the azd
// environment that infra/azd/hooks/preprovision.mjs writes) while infra/main.parameters.json stays a plain file for
// infra/deploy.sh and the az CLI. Outputs are re-exported under the same names: azd stores them in the
// environment, where the hooks (infra/azd/hooks/) and the function service (resourceName) read them.

targetScope = 'resourceGroup'

@description('Azure region (azd: AZURE_LOCATION).')
param location string = resourceGroup().location

@description('Resource name prefix.')
param namePrefix string = 'asyncresp'

// sqlAdminLogin, sqlAdminObjectId and sqlServerExists have defaults only so that azd, which resolves the parameters
// before it runs the preprovision hook (`azd up`), neither prompts for them nor fails under --no-prompt: the hook
// (infra/azd/hooks/preprovision.mjs, also run as preup) always writes them to the azd environment before the real
// deployment, and its failure stops azd (continueOnError: false).
@description('Entra admin of the SQL server (preprovision: an existing server\'s admin, else the signed-in user).')
param sqlAdminLogin string = ''

@description('Object id of that admin.')
param sqlAdminObjectId string = ''

@description('User | Group | Application.')
param sqlAdminPrincipalType string = 'User'

@description('Whether the SQL server already exists (preprovision checks): \'true\' or \'false\', a string because azd fills parameters from environment text.')
@allowed([
  'true'
  'false'
])
param sqlServerExists string = 'false'

@description('Public IPv4 admitted by the SQL firewall for the grant and schema hooks (looked up on every run).')
param deployerIpAddress string = ''

@description('The callback signing secret on the first deployment; empty keeps the stored one.')
@secure()
param callbackSigningSecret string = ''

@description('E-mail for the alerts; empty = none.')
param alertEmail string = ''

module app '../main.bicep' = {
  name: 'asyncresponse'
  params: {
    location: location
    namePrefix: namePrefix
    sqlAdminLogin: sqlAdminLogin
    sqlAdminObjectId: sqlAdminObjectId
    sqlAdminPrincipalType: sqlAdminPrincipalType
    sqlServerExists: sqlServerExists == 'true'
    deployerIpAddress: deployerIpAddress
    callbackSigningSecret: callbackSigningSecret
    alertEmail: alertEmail
  }
}

output FUNCTION_APP_NAME string = app.outputs.FUNCTION_APP_NAME
output FUNCTION_APP_HOST string = app.outputs.FUNCTION_APP_HOST
output SQL_SERVER string = app.outputs.SQL_SERVER
output SQL_SERVER_NAME string = app.outputs.SQL_SERVER_NAME
output SQL_DATABASE string = app.outputs.SQL_DATABASE
output APP_IDENTITY_NAME string = app.outputs.APP_IDENTITY_NAME
output APP_IDENTITY_CLIENT_ID string = app.outputs.APP_IDENTITY_CLIENT_ID
output KEY_VAULT_NAME string = app.outputs.KEY_VAULT_NAME
output APPLICATIONINSIGHTS_NAME string = app.outputs.APPLICATIONINSIGHTS_NAME
output ANNOUNCE_QUEUE_URL string = app.outputs.ANNOUNCE_QUEUE_URL
